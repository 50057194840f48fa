"""The operator's verbs (`verbs.Operator`): the admin CLI, the admin API and the operator console call them.

Above accounts, billing and the catalog, which it reaches together; below every entry point that calls it."""
