"""The /act body out and the chunk in: the request, the answer's parser, action-space helpers."""
