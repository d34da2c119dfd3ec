"""What models exist: the catalogue rows and their fetch."""
