"""Source databases → a neutral schema/row model → Oracle and PostgreSQL DDL, data and loads."""
