"""Errors that the CLI turns into one clear line and exit code 2 (never a traceback)."""


class UsageError(Exception):
    """Bad input: unknown names, malformed registry entries, unreadable or corrupt data."""


class DataUnavailable(UsageError):
    """A dataset cannot be obtained from any source; the message says how to supply it."""
