"""Command line: ``python -m numba_gpux info | demo | compile | cache info | cache clear``."""

from __future__ import annotations

import argparse
import importlib
import os
import shutil
import sys

__all__ = ["main"]


def _cmd_info(args) -> int:
    import llvmlite
    import numba

    import numba_gpux as gpux
    from numba_gpux.devices import targets

    print(f"numba-gpux {gpux.__version__}  (numba {numba.__version__}, llvmlite {llvmlite.__version__}, "
          f"Python {sys.version.split()[0]})")
    print("\nTargets:")
    for name, entry in sorted(targets().items()):
        print(f"  {name:8s} {entry.doc}")
    print("\nDevices (best first):")
    devs = gpux.devices()
    if not devs:
        print("  none found. For the OpenCL CPU driver: pip install 'numba-gpux[cpu]'")
    for d in devs:
        print(f"  {d.spec:16s} {d.name} [{d.vendor}; {d.platform}]")
        lim = d.limits
        keys = ("max_threads_per_block", "max_block_dims", "max_shared_bytes", "compute_units",
                "global_mem_bytes", "il_version", "compute_capability")
        for k in keys:
            if k in lim:
                print(f"      {k:22s} {lim[k]}")
        print(f"      {'features':22s} {', '.join(sorted(d.target_features)) or '-'}")
    from numba_gpux.devices import unusable_devices

    bad = unusable_devices()
    if bad:
        print("\nUnusable devices (listed by their driver, but a trivial kernel failed on them):")
    for d in bad:
        print(f"  {d.spec:16s} {d.name} [{d.vendor}; {d.platform}]")
        print(f"      {'unusable':22s} {d.unusable_reason}")
    from numba_gpux.devices import discovery_errors

    if discovery_errors:
        print("\nTargets whose device discovery failed (an error in the target's code):")
    for name, why in sorted(discovery_errors.items()):
        print(f"  {name:16s} {why}")
    try:
        print(f"\nDefault device: {gpux.default_device().spec}")
    except gpux.DeviceNotFoundError:
        print("\nDefault device: none")
    print("\nToolchains:")
    for tool in ("ptxas", "nvcc", "spirv-val", "spirv-dis"):
        print(f"  {tool:10s} {shutil.which(tool) or 'not found'}")
    driver_modules = sorted({m for e in targets().values() for m in e.extra.get("driver_modules", ())})
    for mod in driver_modules:
        try:
            importlib.import_module(mod)
            state = "installed"
        except Exception:
            state = "not installed"
        print(f"  {mod:14s} {state}")
    return 0


def _cmd_demo(args) -> int:
    from .demo import run_demo

    return run_demo(args.device)


def _cmd_compile(args) -> int:
    import runpy

    import numba_gpux as gpux

    if ":" not in args.spec:
        print("compile: expected FILE:FUNC", file=sys.stderr)
        return 2
    path, func = args.spec.rsplit(":", 1)
    if not os.path.exists(path):
        print(f"compile: no such file: {path}", file=sys.stderr)
        return 2
    ns = runpy.run_path(path, run_name="__gpux_compile__")
    if func not in ns:
        print(f"compile: {path} defines no {func!r}", file=sys.stderr)
        return 2
    obj = ns[func]
    try:
        art = gpux.compile(obj, args.sig, target=args.target, device=args.device_function)
    except gpux.GpuxUserError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # typing errors from Numba carry the source location
        print(f"error: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    if args.emit == "llvm":
        sys.stdout.write(art.llvm_ir or "")
    elif args.emit == "binary":
        if art.binary is None:
            print(f"compile: target {args.target} produces no binary here", file=sys.stderr)
            return 1
        out = args.output or "-"
        if out == "-":
            sys.stdout.buffer.write(art.binary)
        else:
            with open(out, "wb") as f:
                f.write(art.binary)
    else:
        sys.stdout.write(art.text or "")
    return 0


def _cmd_cache(args) -> int:
    from .autotuning import entries
    from .cache import clear_disk, disk_usage
    from .cachefile import key_status

    if args.action == "clear":
        where = disk_usage()["folder"]
        n = clear_disk()
        print(f"removed {n} file(s) from {where}")
        return 0
    u = disk_usage()
    limit = u["limit_bytes"]
    print(f"folder   {u['folder']}")
    print(f"limit    {_size(limit) if limit else 'none'} (NUMBA_GPUX_CACHE_SIZE)")
    key_file, key_state = key_status()
    print(f"key      {key_file}: {key_state} (NUMBA_GPUX_CACHE_KEY_FILE)")
    print(f"entries  {u['entries']}, {_size(u['bytes'])}")
    labels = {"index": "found before typing", "code": "found by the neutral IR",
              "programs": "device programs", "libraries": "targets' parsed libraries",
              "tuning": "autotuning results"}
    for kind, v in u["kinds"].items():
        print(f"  {kind:9s} {v['entries']:6d} entries {_size(v['bytes']):>10s}  ({labels[kind]})")
    tuned = entries()
    if tuned:
        print("tuned (NUMBA_GPUX_AUTOTUNE=0: off, NUMBA_GPUX_RETUNE=1: tune again)")
    for e in tuned:
        device = str(e.get("device", "")).split("|")
        where = f"{device[0]}: {device[2]}" if len(device) > 2 else "?"
        choice = ", ".join(f"{k}={v}" for k, v in (e.get("choice") or {}).items())
        sig = f" ({e['signature']})" if e.get("signature") else ""
        print(f"  {e.get('subject')}{sig} key={e.get('key')} on {where}: {choice}; "
              f"{len(e.get('measured') or ())} candidates in {float(e.get('seconds') or 0):.2f} s")
    return 0


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m numba_gpux",
                                description="numba-gpux: Python kernels on CUDA, OpenCL and Metal GPUs")
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("info", help="version, targets, devices and their limits, toolchains")
    d = sub.add_parser("demo", help="run a few kernels on the default device, checked against NumPy")
    d.add_argument("--device", default=None, help="device spec, e.g. opencl:cpu:0")
    c = sub.add_parser("compile", help="print the LLVM IR or the target code of a kernel")
    c.add_argument("spec", help="FILE:FUNC (FUNC may be a @jit kernel or a plain function)")
    c.add_argument("--sig", required=True, help='signature, e.g. "void(float32[::1], float32)"')
    c.add_argument("--target", default="opencl")
    c.add_argument("--emit", choices=("asm", "llvm", "binary"), default="asm",
                   help="asm: PTX / SPIR-V disassembly / MSL; llvm: optimized LLVM IR; binary")
    c.add_argument("--device-function", action="store_true", help="compile as a device function")
    c.add_argument("-o", "--output", default=None)
    k = sub.add_parser("cache", help="the disk cache of cache=True kernels and autotuning results: info or clear")
    k.add_argument("action", choices=("info", "clear"))
    args = p.parse_args(argv)
    return {"info": _cmd_info, "demo": _cmd_demo, "compile": _cmd_compile,
            "cache": _cmd_cache}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
