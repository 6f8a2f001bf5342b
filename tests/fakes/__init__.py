"""Fakes of the external services, served over HTTP on loopback so the real SDKs talk to them."""
