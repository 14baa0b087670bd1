"""Embedding: the embedder interface, the bundled/ONNX-folder and OpenAI-compatible providers, model folders."""
