"""Standard-library-only client for the companion integration platform (REST API v1)."""

from . import types
from .client import VERSION, Client, CompanionError
from .webhooks import WebhookVerificationError, verify_webhook

__version__ = VERSION
__all__ = ["Client", "CompanionError", "VERSION", "WebhookVerificationError", "verify_webhook", "types", "__version__"]
