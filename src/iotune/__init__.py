"""iotune: an auto-tuner for the HDF5 / MPI-IO stack of HPC applications."""

__version__ = "0.1.0"
