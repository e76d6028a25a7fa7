"""The built-in runners: controls with known metric values, and a real cascade."""
