"""ADK's `google.adk.utils` helpers that agent code imports."""
