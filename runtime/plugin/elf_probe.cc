// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "plugin/elf_probe.h"

#include <elf.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace mstar {
namespace {

std::string MachineName(uint16_t machine) {
  switch (machine) {
    case EM_X86_64: return "x86_64";
    case EM_386: return "i386";
    case EM_AARCH64: return "aarch64";
    case EM_ARM: return "arm";
    case EM_PPC64: return "ppc64";
    case EM_RISCV: return "riscv";
    case EM_S390: return "s390";
    default: break;
  }
  return "ELF machine " + std::to_string(machine);
}

uint16_t HostMachine() {
#if defined(__x86_64__)
  return EM_X86_64;
#elif defined(__aarch64__)
  return EM_AARCH64;
#elif defined(__powerpc64__)
  return EM_PPC64;
#elif defined(__riscv)
  return EM_RISCV;
#else
  return EM_NONE;
#endif
}

}  // namespace

std::string HostArchitecture() {
  return MachineName(HostMachine());
}

Status ProbeSharedLibrary(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError("cannot read library " + path + ": " + std::strerror(errno));
  unsigned char ident[EI_NIDENT] = {};
  in.read(reinterpret_cast<char*>(ident), EI_NIDENT);
  if (in.gcount() != EI_NIDENT || std::memcmp(ident, ELFMAG, SELFMAG) != 0) {
    return InvalidArgument(path + " is not a shared library (no ELF header)");
  }
  if (ident[EI_CLASS] != ELFCLASS64) {
    return Incompatible(path + " is a 32-bit library; this runtime is 64-bit");
  }
  if (ident[EI_DATA] != ELFDATA2LSB) {
    return Incompatible(path + " is big-endian; this machine is little-endian");
  }
  Elf64_Ehdr header{};
  in.seekg(0);
  in.read(reinterpret_cast<char*>(&header), sizeof(header));
  if (in.gcount() != static_cast<std::streamsize>(sizeof(header))) {
    return InvalidArgument(path + " is truncated (incomplete ELF header)");
  }
  if (header.e_type != ET_DYN) {
    return InvalidArgument(path + " is an ELF file but not a shared library (e_type " +
                           std::to_string(header.e_type) + ")");
  }
  uint16_t host = HostMachine();
  if (host != EM_NONE && header.e_machine != host) {
    return Incompatible(path + " is built for " + MachineName(header.e_machine) +
                        "; this machine is " + MachineName(host));
  }
  return Status::Ok();
}

}  // namespace mstar
