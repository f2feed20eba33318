"""Local inputs of the paper rehearsal: every external input of profile=paper written by
code, in its published layout, with tiny random checkpoints (`tests.rehearsal.inputs`)."""
