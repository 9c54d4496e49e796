"""Pull an image through the engine, carefully: checks before, retries during, proof after.

The engine's pull events, folded into progress, are a contract (`envcheck.contracts.pull_events`).

- `plan` (pure): what to pull — the tag, its mirrors and the matrix's pin — and what a pull gives.
- `run`: one pull — the registry read and checks before, the engine's stream with retries and
  the mirror during, the digest proven after.
- `images`: what the engine already holds (by name or digest), and removing a name again.
- `ensure`: the smoke's entry point — the image if present, else pulled.
"""
