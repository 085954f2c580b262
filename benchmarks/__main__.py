"""`python -m benchmarks`: the whole suite (see benchmarks/run.py);
`python -m benchmarks --device cuda`: the GPU training steps beside their
peers (see benchmarks/cuda.py)."""
import sys

argv = sys.argv[1:]
if any(a == "--device" or a.startswith("--device=") for a in argv):
    from benchmarks.cuda import main as cuda_main

    sys.exit(cuda_main(argv))

from benchmarks.run import main  # noqa: E402

sys.exit(main())
