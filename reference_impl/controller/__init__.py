"""The controller node: metadata image, stores, broker lifecycle, propagation."""
