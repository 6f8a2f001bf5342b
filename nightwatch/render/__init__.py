"""Renderers of a RunReport: the terminal summary, Markdown for artifacts and files, Slack Block Kit."""
