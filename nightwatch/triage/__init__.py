"""Triage: one cheap request per error and its verdict (verdict), the night's batching plan (plan), the batch
backends behind one interface (backends), submitting and collecting batches (batch) and the ledger that makes a
night's batches survive a crash or a rerun (ledger)."""
