"""A goal's life: which goal holds the slot, acceptance, services, outcome, recording, time bound."""
