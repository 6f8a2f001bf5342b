"""Running without Anthropic: the deterministic offline model (model) and its rules (heuristics, origin_rules),
behind an emulation of the Messages API's server side (emulated_api, emulated_cache, emulated_edits), and Message
Batches answered by it (batches). Tests and benchmarks use the emulation too; a night with an Anthropic key never imports this package."""
