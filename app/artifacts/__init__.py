"""Versioned artifacts: content-addressed blob storage plus the version rows that name the blobs."""
