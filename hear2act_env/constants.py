"""Constants shared across the package (no imports: any layer may use them)."""

#: Sample rate of every waveform the env produces and every audio consumer expects (Hz).
SAMPLE_RATE = 16_000
