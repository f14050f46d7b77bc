"""What the manual could not answer, kept for its maintainers as fingerprints, never as pastes."""
