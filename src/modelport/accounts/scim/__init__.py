"""SCIM 2.0 provisioning's storage: users as an identity provider sees them (`users`) and its groups
(`groups`). The HTTP side is `modelport.scim`."""
