"""The default organizer, apart from the server so that ``hatp-calendar --help`` can name it cheaply."""

DEFAULT_ORGANIZER = "sales-bot@acme.com"
