"""torch.backends.cpu: what the CPU supports."""

__all__ = ["get_cpu_capability"]


def get_cpu_capability():
    """The widest vector instruction set of this CPU that Lucid's kernels may
    use, in PyTorch's words ("AVX512", "AVX2", "DEFAULT" on x86; "NEON" on ARM)."""
    import platform

    machine = platform.machine().lower()
    if machine in ("arm64", "aarch64"):
        return "NEON"
    try:
        with open("/proc/cpuinfo") as f:
            flags = f.read()
    except OSError:
        return "DEFAULT"
    if " avx512f" in flags:
        return "AVX512"
    if " avx2" in flags:
        return "AVX2"
    return "DEFAULT"
