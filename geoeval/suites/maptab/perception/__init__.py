"""The pixel-only map reader of the perception baseline (`reader`): colours, markers, edges, OCR labels, and answers computed on the perceived map."""
