# Finds the MPI and the parallel HDF5 of one ABI family (see IOTUNE_MPI in CMakeLists.txt) and
# defines:
#   MPI::MPI_C                 the MPI (FindMPI)
#   IOTUNE_HDF5_TARGET         a target to link parallel HDF5 with, IOTUNE_HDF5_INCLUDE_DIRS
#   IOTUNE_MPI_FAMILY          mpich or openmpi, read from the mpi.h that was found
#   IOTUNE_MPIEXEC             the launcher of that MPI for the tests, as a command list
#   IOTUNE_FAMILY_LIBDIR, IOTUNE_FAMILY_LIBEXECDIR   where this family's build is installed
# and writes iotune-mpi.json (family and launcher) into the build tree and the install tree:
# the Python package reads it to pick the runtime that matches an application.

set(_iotune_families mpich openmpi)
if(NOT IOTUNE_MPI STREQUAL "auto" AND NOT IOTUNE_MPI IN_LIST _iotune_families)
  message(FATAL_ERROR "IOTUNE_MPI=${IOTUNE_MPI}: give auto, mpich or openmpi")
endif()

if(NOT IOTUNE_MPI STREQUAL "auto")
  # Debian names each MPI's tools with a suffix (mpicc.mpich, mpiexec.openmpi): FindMPI looks
  # for those first, so the mpicc/mpiexec alternatives never decide which MPI is built.
  set(MPI_EXECUTABLE_SUFFIX .${IOTUNE_MPI})
endif()
find_package(MPI REQUIRED COMPONENTS C)

# The family comes from the header itself, whatever the wrapper was called.
include(CheckCSourceCompiles)
set(CMAKE_REQUIRED_LIBRARIES MPI::MPI_C)
set(CMAKE_REQUIRED_QUIET ON)
unset(IOTUNE_MPI_IS_OPENMPI CACHE)
check_c_source_compiles("#include <mpi.h>
#ifndef OPEN_MPI
#error not Open MPI
#endif
int main(void) { return 0; }" IOTUNE_MPI_IS_OPENMPI)
unset(CMAKE_REQUIRED_LIBRARIES)
unset(CMAKE_REQUIRED_QUIET)
if(IOTUNE_MPI_IS_OPENMPI)
  set(IOTUNE_MPI_FAMILY openmpi)
else()
  set(IOTUNE_MPI_FAMILY mpich)
endif()
if(NOT IOTUNE_MPI STREQUAL "auto" AND NOT IOTUNE_MPI STREQUAL IOTUNE_MPI_FAMILY)
  message(FATAL_ERROR
    "IOTUNE_MPI=${IOTUNE_MPI}, but the MPI found (${MPI_C_COMPILER}) is ${IOTUNE_MPI_FAMILY}: "
    "this build directory was configured for another MPI; use a new one")
endif()
message(STATUS "iotune: building for ${IOTUNE_MPI_FAMILY} (MPI ${MPI_C_VERSION}, "
               "${MPI_C_COMPILER}, launcher ${MPIEXEC_EXECUTABLE})")

# Parallel HDF5 of the same family. Debian installs one per MPI beside the serial one, and
# its h5pcc alternative may point at the other MPI's: ask pkg-config for hdf5-<family> first,
# unless the user gave HDF5_ROOT (a cluster's module).
find_package(PkgConfig)
set(_iotune_hdf5_pc "")
if(PkgConfig_FOUND AND NOT HDF5_ROOT AND NOT DEFINED ENV{HDF5_ROOT})
  pkg_check_modules(PHDF5 IMPORTED_TARGET hdf5-${IOTUNE_MPI_FAMILY})
  if(PHDF5_FOUND)
    set(_iotune_hdf5_pc hdf5-${IOTUNE_MPI_FAMILY})
  endif()
endif()
if(_iotune_hdf5_pc)
  set(IOTUNE_HDF5_TARGET PkgConfig::PHDF5)
  set(IOTUNE_HDF5_INCLUDE_DIRS ${PHDF5_INCLUDE_DIRS})
else()
  set(HDF5_PREFER_PARALLEL TRUE)
  find_package(HDF5 COMPONENTS C)
  if(NOT HDF5_FOUND OR NOT HDF5_IS_PARALLEL)
    message(FATAL_ERROR "no parallel HDF5 for ${IOTUNE_MPI_FAMILY}: install "
                        "libhdf5-${IOTUNE_MPI_FAMILY}-dev, or give -DHDF5_ROOT=...")
  endif()
  add_library(iotune_hdf5 INTERFACE)
  target_include_directories(iotune_hdf5 INTERFACE ${HDF5_C_INCLUDE_DIRS} ${HDF5_INCLUDE_DIRS})
  target_link_libraries(iotune_hdf5 INTERFACE ${HDF5_C_LIBRARIES})
  target_compile_definitions(iotune_hdf5 INTERFACE ${HDF5_C_DEFINITIONS})
  set(IOTUNE_HDF5_TARGET iotune_hdf5)
  set(IOTUNE_HDF5_INCLUDE_DIRS ${HDF5_C_INCLUDE_DIRS} ${HDF5_INCLUDE_DIRS})
endif()

# The launcher the tests use. Open MPI refuses more ranks than cores and, as root, to run at
# all, unless told: both are harmless elsewhere.
set(IOTUNE_MPIEXEC_PREFLAGS ${MPIEXEC_PREFLAGS})
if(IOTUNE_MPI_FAMILY STREQUAL "openmpi")
  list(APPEND IOTUNE_MPIEXEC_PREFLAGS --oversubscribe)
  set(IOTUNE_MPIEXEC ${CMAKE_COMMAND} -E env OMPI_ALLOW_RUN_AS_ROOT=1
                     OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 ${MPIEXEC_EXECUTABLE})
else()
  set(IOTUNE_MPIEXEC ${MPIEXEC_EXECUTABLE})
endif()
list(APPEND IOTUNE_MPIEXEC ${IOTUNE_MPIEXEC_PREFLAGS} ${MPIEXEC_NUMPROC_FLAG})

include(GNUInstallDirs)
set(IOTUNE_FAMILY_LIBDIR ${CMAKE_INSTALL_LIBDIR}/iotune/${IOTUNE_MPI_FAMILY})
set(IOTUNE_FAMILY_LIBEXECDIR ${CMAKE_INSTALL_LIBEXECDIR}/iotune/${IOTUNE_MPI_FAMILY})

# iotune-mpi.json: what the Python package needs to know of this build's MPI.
set(_iotune_flags "")
foreach(flag IN LISTS IOTUNE_MPIEXEC_PREFLAGS)
  string(APPEND _iotune_flags "\"${flag}\", ")
endforeach()
string(REGEX REPLACE ", $" "" _iotune_flags "${_iotune_flags}")
file(WRITE ${CMAKE_BINARY_DIR}/iotune-mpi.json
  "{\"family\": \"${IOTUNE_MPI_FAMILY}\", \"mpi_version\": \"${MPI_C_VERSION}\", "
  "\"mpicc\": \"${MPI_C_COMPILER}\", \"mpiexec\": \"${MPIEXEC_EXECUTABLE}\", "
  "\"numproc_flag\": \"${MPIEXEC_NUMPROC_FLAG}\", \"preflags\": [${_iotune_flags}]}\n")
install(FILES ${CMAKE_BINARY_DIR}/iotune-mpi.json DESTINATION ${IOTUNE_FAMILY_LIBDIR})
