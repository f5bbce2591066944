"""libvirt domain XML, one small class per element the lab controls."""
