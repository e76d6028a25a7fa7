"""The built-in datasets of Full-Duplex-Bench v1.5: the script format (scripts.py), one sample's
two inputs and its overlap window (compose.py) and the dataset stage (stage.py: the `dataset`
hook)."""
