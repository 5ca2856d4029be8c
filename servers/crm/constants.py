"""The deal stages, apart from the store so that ``hatp-crm --help`` can name them cheaply."""

STAGES = ("Prospecting", "Qualification", "Proposal", "Negotiation", "Won", "Lost")
