"""Runs that outlive a connection: run keys, asks and their waiting, reminders and notices."""
