"""Device cost of the pipeline's work, from shapes and token counts alone: the FLOP and
byte counts of a step (`work`, `decoder`, `seq2seq`), the devices' peaks (`peaks`) and the
published configs of the profiles' models (`known_models`). The benchmarks re-export the
counting (`benchmarks.roofline`); the stages may not import the benchmarks.
"""
