"""A MapTab map as a metro-style image (`image`): the network strokes, label placement and style."""
