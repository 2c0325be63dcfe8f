/* placeholder until the module lands */
int mp_placeholder_traffic;
