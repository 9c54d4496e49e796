"""What a registry knows about an image before anything is pulled.

The digest and platforms come from the engine (`documents.parse_distribution` reads its answer to
`docker.APIClient.inspect_distribution`): the daemon asks the registry through its own network
path — its proxy, `registry-mirrors`, `insecure-registries` — with the logins the docker CLI
stored, exactly as `docker pull` will. What the engine does not tell (the image config's env, for
its CUDA claims; layer sizes, for the progress bars; tag lists, for "tags nearby") is read by the
read-only Registry HTTP API v2 client (standard library only), and is advisory: `envcheck.pull`
warns and lets the engine pull when that read fails.

- `errors`: what a failed read means, each one screen with its exit status.
- `documents` (pure): manifests, indexes, configs and the engine's answer, checked field by field.
- `auth` (pure): which hosts get plain HTTP, which token realms may be followed, credentials.
- `http/` (the I/O): `transport`, the HTTP(S)-only opener and the overall deadline of one
  request; `client`, `RegistryClient`, the requests and the auth handshake.
"""
