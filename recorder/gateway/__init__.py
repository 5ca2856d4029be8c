"""The data plane: each agent call checked, decided, sent to its tool server and recorded."""
