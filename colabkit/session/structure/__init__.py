"""Coordination structures: the interface (`base.Structure`), the study's (`shipped`: the memory
build, approval gates, living memory updates; their mechanics in `build_phase`, `gating`,
`memory_updates`), the worked example (`checklist`) and where a variant's are found (`registry`)."""
