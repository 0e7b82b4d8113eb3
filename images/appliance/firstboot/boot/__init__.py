"""The appliance's boot program, one module per concern (appliance.py is its command line):

common           paths, the journal, commands, files, polling
status           the status file, the console and the login prompt: where the operator looks
configure        early boot: the node file (cloud-init or the boot partition), host name, network, SSH keys
gateway          the node's gateway REST API: secrets and functions, rendered from the node description
registry_client  the node registry through the function's GraphQL `meta` requests, signed
database         MongoDB's official image: pulled once, its single-node replica set initiated
node             `up`: the node started, its function deployed, itself and its peers registered
health           GET /health: every service checked now (node_health.py), with the boot status
"""
