"""AMD Instinct (MI300X-class): amd-smi, rocm-smi, rccl-tests, TransferBench."""
