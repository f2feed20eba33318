"""Entry points: full.py (the DAG), stage.py (rerun one stage), sweep.py (Tune)."""
