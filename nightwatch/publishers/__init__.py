"""Publishers: where a night's results go (Slack, GitHub, or files when offline)."""
