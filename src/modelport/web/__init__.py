"""The HTTP toolkit every feature uses: auth dependencies, envelopes, errors, request ids. Imports no feature."""
