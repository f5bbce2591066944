"""The statistics of ``lab compare``, ``lab plan`` and ``lab report``: pure functions on arrays.

``descriptive`` reproduces the reference study's table (mean, sd, margin of error),
``difference`` answers the question it did not (how big is the difference, with what
uncertainty), ``verdict`` turns that into one of four outcomes, ``diagnostics`` checks the
assumptions behind it, ``planning`` says how many samples a question needs, and ``analysis``
puts them together per workload and metric. The study design adds ``sequential`` (stopping
early with an anytime-valid confidence sequence), ``paired`` (synchronised runs paired by
iteration), ``warmup`` (declared and detected warm-up) and ``placement`` (the variant and
the CPU placement effects of a counterbalanced swap, separately); a sweep adds ``sweep`` (a
verdict per value, corrected together with ``multiplicity``'s Holm or Benjamini–Hochberg,
and where B starts to be better). Across versions, ``changes`` finds where a metric's history
changes level (with a ratio interval per change) and ``bisection`` names the first commit of
a regression with a bounded chance of naming a wrong one.
"""
