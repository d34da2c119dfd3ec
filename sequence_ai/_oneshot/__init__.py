"""One-shot gateway calls beside the loop: account, chat, decide, detect, depth, embed."""
