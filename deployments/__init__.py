"""Deployment definitions: the nightly schedule and the manual rerun, served or deployed."""
