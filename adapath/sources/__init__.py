"""Graph sources: importers of real releases into the PrimeKG-schema graph."""
