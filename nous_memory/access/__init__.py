"""API keys kept in the database: who may call the service, for which agents, in which
role (``keys``), and the name the audit trail records for a request's writes."""

from .keys import ROLES, ApiKeyInfo, KeyGrant, Keys, Role, hash_secret, may_act_for

__all__ = ["ROLES", "ApiKeyInfo", "KeyGrant", "Keys", "Role", "hash_secret",
           "may_act_for"]
