"""Database engines: one interface (`Engine`), one implementation per target."""
