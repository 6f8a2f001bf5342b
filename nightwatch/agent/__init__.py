"""The investigation agent: definitions, tools, the loop, and the model clients it runs on."""
