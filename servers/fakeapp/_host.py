"""Where the app listens: loopback only (a test app with a control API must not face the network)."""

HOST = "127.0.0.1"
