"""The transport seam and HTTP: both servers' clients, TLS pinning, caps, deadlines, redaction."""
