"""The registry read over the network (the I/O half of `envcheck.registry`): `transport`, the
HTTP(S)-only opener and the deadline of one request; `client`, `RegistryClient`, the requests and
the auth handshake. What the answers mean is pure and lives one folder up."""
