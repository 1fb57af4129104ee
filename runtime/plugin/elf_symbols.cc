// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "plugin/elf_symbols.h"

#include <elf.h>

#include <algorithm>
#include <cstring>

#include "core/file_bytes.h"

namespace mstar {
namespace {

// Reads a T at offset of bytes, when it lies inside them.
template <typename T>
bool ReadAt(const std::string& bytes, uint64_t offset, T* out) {
  if (offset > bytes.size() || bytes.size() - offset < sizeof(T)) return false;
  std::memcpy(out, bytes.data() + offset, sizeof(T));
  return true;
}

bool Exported(const Elf64_Sym& symbol) {
  const unsigned bind = ELF64_ST_BIND(symbol.st_info);
  const unsigned visibility = ELF64_ST_VISIBILITY(symbol.st_other);
  return symbol.st_shndx != SHN_UNDEF && symbol.st_name != 0 &&
         (bind == STB_GLOBAL || bind == STB_WEAK || bind == STB_GNU_UNIQUE) &&
         (visibility == STV_DEFAULT || visibility == STV_PROTECTED);
}

// An undefined symbol that binding must find (global, not weak): a function or object of
// another library.
bool RequiredFromElsewhere(const Elf64_Sym& symbol) {
  return symbol.st_shndx == SHN_UNDEF && symbol.st_name != 0 &&
         ELF64_ST_BIND(symbol.st_info) == STB_GLOBAL;
}

// The names of path's dynamic symbols that keep says to, sorted and unique.
Result<std::vector<std::string>> DynamicSymbols(const std::string& path,
                                                bool (*keep)(const Elf64_Sym&)) {
  MSTAR_ASSIGN_OR_RETURN(const std::string bytes, ReadFileBytes(path));
  Elf64_Ehdr header{};
  if (!ReadAt(bytes, 0, &header) || std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 ||
      header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_ident[EI_DATA] != ELFDATA2LSB) {
    return InvalidArgument(path + " is not a 64-bit little-endian ELF file");
  }
  if (header.e_shentsize != sizeof(Elf64_Shdr))
    return InvalidArgument(path + ": unexpected section header size");
  auto section = [&](uint64_t index, Elf64_Shdr* out) {
    return index < header.e_shnum &&
           ReadAt(bytes, header.e_shoff + index * sizeof(Elf64_Shdr), out);
  };
  std::vector<std::string> names;
  bool found = false;
  for (uint64_t i = 0; i < header.e_shnum; ++i) {
    Elf64_Shdr symbols{};
    if (!section(i, &symbols)) return InvalidArgument(path + ": section header past the end");
    if (symbols.sh_type != SHT_DYNSYM) continue;
    found = true;
    Elf64_Shdr strings{};
    if (!section(symbols.sh_link, &strings) || strings.sh_type != SHT_STRTAB ||
        strings.sh_offset > bytes.size() || bytes.size() - strings.sh_offset < strings.sh_size) {
      return InvalidArgument(path + ": the dynamic symbols' string table is damaged");
    }
    if (symbols.sh_entsize != sizeof(Elf64_Sym))
      return InvalidArgument(path + ": unexpected dynamic symbol size");
    const uint64_t count = symbols.sh_size / sizeof(Elf64_Sym);
    for (uint64_t k = 0; k < count; ++k) {
      Elf64_Sym symbol{};
      if (!ReadAt(bytes, symbols.sh_offset + k * sizeof(Elf64_Sym), &symbol))
        return InvalidArgument(path + ": dynamic symbol past the end");
      if (!keep(symbol)) continue;
      if (symbol.st_name >= strings.sh_size)
        return InvalidArgument(path + ": a dynamic symbol's name lies outside its string table");
      const char* name = bytes.data() + strings.sh_offset + symbol.st_name;
      names.emplace_back(name, strnlen(name, strings.sh_size - symbol.st_name));
    }
  }
  if (!found) return InvalidArgument(path + " has no dynamic symbol table (.dynsym)");
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

}  // namespace

Result<std::vector<std::string>> ExportedElfSymbols(const std::string& path) {
  return DynamicSymbols(path, &Exported);
}

Result<std::vector<std::string>> RequiredElfSymbols(const std::string& path) {
  return DynamicSymbols(path, &RequiredFromElsewhere);
}

}  // namespace mstar
