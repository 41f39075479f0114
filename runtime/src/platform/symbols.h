/* Symbols found at run time, for the MPI and HDF5 functions the runtime resolves (mpiapi.c,
 * h5api.c) and the real functions behind its wrappers. */
#ifndef IOTUNE_SYMBOLS_H
#define IOTUNE_SYMBOLS_H

/* Finds the next definition of a symbol after this library (RTLD_NEXT), or in any loaded
 * object when the application's library was loaded privately (e.g. by Python). */
void *iot_find_symbol(const char *name);

#endif
