"""Standard-library-only client for the companion integration platform."""

from .client import Client, CompanionError, VERSION

__all__ = ["Client", "CompanionError", "VERSION"]
