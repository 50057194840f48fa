"""Asynchronous media tasks: creation with a balance freeze, durable execution on the queue, settle once."""
